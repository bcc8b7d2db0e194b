// Keeps the inbox current without a reload: asks for the queue every few seconds and
// swaps it in when it changed (same filters, same page). Focus, the current item and
// the selected items stay as they were.
//
// And moves through it by keyboard (the page's "Keyboard" section says how): j / k or
// the arrows pick the next or previous item and focus its link (Enter opens it), x
// selects it, a / r ask to confirm approving or rejecting it in a dialog (Enter
// confirms, Esc cancels), / goes to the search. No key acts while a field has focus.
(function () {
  "use strict";
  var region = document.getElementById("queue");
  if (!region) { return; }
  var url = region.getAttribute("data-refresh");
  var every = 2000;
  var dialog = document.getElementById("confirm");
  var status = document.getElementById("keyboard-status");
  var currentId = null;

  function items() {
    return Array.prototype.slice.call(region.querySelectorAll("li.item"));
  }

  function say(text) {
    if (status) { status.textContent = text; }
  }

  function select(item, keepFocus) {
    items().forEach(function (other) {
      other.classList.remove("current");
      other.removeAttribute("aria-current");
    });
    if (!item) { currentId = null; return; }
    item.classList.add("current");
    item.setAttribute("aria-current", "true");
    currentId = item.getAttribute("data-interrupt");
    var link = item.querySelector("a.open");
    if (link && !keepFocus) { link.focus(); }
  }

  function current() {
    var all = items();
    for (var i = 0; i < all.length; i += 1) {
      if (all[i].getAttribute("data-interrupt") === currentId) { return i; }
    }
    return -1;
  }

  function move(step) {
    var all = items();
    if (!all.length) { say("Nothing waits for a decision."); return; }
    var at = current();
    var next = at === -1 ? (step > 0 ? 0 : all.length - 1) : at + step;
    select(all[Math.max(0, Math.min(all.length - 1, next))]);
  }

  function confirmDecision(decision) {
    var all = items();
    var at = current();
    if (at === -1 || !dialog) { say("Pick an item first: j or the down arrow."); return; }
    var item = all[at];
    var refused = item.getAttribute("data-refused");
    if (refused) { say("You may not decide this: " + refused); return; }
    var id = item.getAttribute("data-interrupt");
    var verb = decision === "approve" ? "Approve" : "Reject";
    var needsReason = item.getAttribute("data-reason-required") === "1";
    document.getElementById("confirm-title").textContent = verb + " this item?";
    document.getElementById("confirm-what").textContent = item.querySelector("a.open").textContent;
    document.getElementById("confirm-where").textContent = Array.prototype.map.call(
      item.querySelectorAll(".meta > span"), function (part) { return part.textContent.trim(); }).join(" · ");
    document.getElementById("confirm-payload").textContent = item.querySelector(".payload-text").textContent;
    document.getElementById("confirm-action").value = decision;
    document.getElementById("confirm-interrupt").value = id;
    var digest = document.getElementById("confirm-digest");
    digest.name = "digest-" + id;
    digest.value = item.getAttribute("data-digest") || "";
    document.getElementById("confirm-at").value = String(at);
    var reason = document.getElementById("confirm-reason");
    reason.value = "";
    reason.required = needsReason;
    document.getElementById("confirm-reason-label").textContent = needsReason ? "Reason (required by this graph)" : "Reason (optional)";
    var yes = document.getElementById("confirm-yes");
    yes.textContent = verb;
    yes.className = decision;
    dialog.showModal();
    (needsReason ? reason : yes).focus();
  }

  function typing(target) {
    var tag = target && target.tagName ? target.tagName.toLowerCase() : "";
    if (tag === "input") {  // a checkbox or a button takes no text: the keys still work
      return ["checkbox", "radio", "button", "submit", "hidden"].indexOf(target.type) === -1;
    }
    return tag === "textarea" || tag === "select" || Boolean(target && target.isContentEditable);
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey || (dialog && dialog.open) || typing(event.target)) {
      return;
    }
    var key = event.key;
    var handled = true;
    if (key === "j" || key === "ArrowDown") { move(1); }
    else if (key === "k" || key === "ArrowUp") { move(-1); }
    else if (key === "a") { confirmDecision("approve"); }
    else if (key === "r") { confirmDecision("reject"); }
    else if (key === "x") {
      var box = current() === -1 ? null : items()[current()].querySelector("input[type=checkbox]");
      if (box) { box.checked = !box.checked; say(box.checked ? "Selected" : "Not selected"); }
    }
    else if (key === "/") { var search = document.getElementById("f-q"); if (search) { search.focus(); search.select(); } }
    else { handled = false; }
    if (handled) { event.preventDefault(); }
  });

  if (dialog) {
    document.getElementById("confirm-no").addEventListener("click", function () { dialog.close(); });
    dialog.addEventListener("close", function () {
      var at = current();
      if (at !== -1) { select(items()[at]); }
    });
  }

  // After a decision from here, the item that took the decided one's place is current.
  var params = new URLSearchParams(window.location.search);
  if (params.has("at")) {
    var all = items();
    var at = parseInt(params.get("at"), 10);
    if (all.length && !isNaN(at)) { select(all[Math.max(0, Math.min(all.length - 1, at))]); }
  }

  if (!window.fetch) { return; }

  function signatureOf(html) {
    var match = /data-signature="([^"]*)"/.exec(html);
    return match ? match[1] : html;
  }

  function shown() {
    var queue = region.querySelector(".queue");
    return queue ? queue.getAttribute("data-signature") : "";
  }

  function refresh() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (response.redirected && response.url.indexOf("/ui/sign-in") !== -1) {
          window.location.assign(response.url);
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html && signatureOf(html) !== shown() && !(dialog && dialog.open)) {
          var focused = document.activeElement && region.contains(document.activeElement)
            ? document.activeElement.id : null;
          var checked = Array.prototype.map.call(
            region.querySelectorAll("input[type=checkbox]:checked"), function (box) { return box.id; });
          var was = current();
          region.innerHTML = html;
          checked.forEach(function (id) {
            var box = document.getElementById(id);
            if (box) { box.checked = true; }
          });
          if (currentId !== null) {
            var all = items();
            var still = current();
            var keepFocus = focused === null;  // the reviewer is elsewhere: leave them there
            if (still !== -1) { select(all[still], keepFocus); }
            else if (all.length && was !== -1) { select(all[Math.min(was, all.length - 1)], keepFocus); }
            else { currentId = null; }
          } else if (focused && document.getElementById(focused)) {
            document.getElementById(focused).focus();
          }
        }
      })
      .catch(function () { /* offline for a moment: try again at the next tick */ })
      .then(function () { window.setTimeout(refresh, every); });
  }

  window.setTimeout(refresh, every);
}());

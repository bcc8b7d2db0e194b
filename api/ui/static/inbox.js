// Keeps the inbox current without a reload: asks for the queue every few seconds and
// swaps it in when it changed (same filters, same page). Focus stays where it was.
(function () {
  "use strict";
  var region = document.getElementById("queue");
  if (!region || !window.fetch) { return; }
  var url = region.getAttribute("data-refresh");
  var every = 2000;

  function signatureOf(html) {
    var match = /data-signature="([^"]*)"/.exec(html);
    return match ? match[1] : html;
  }

  function current() {
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
        if (html && signatureOf(html) !== current()) {
          var focused = document.activeElement && region.contains(document.activeElement)
            ? document.activeElement.id : null;
          region.innerHTML = html;
          if (focused && document.getElementById(focused)) {
            document.getElementById(focused).focus();
          }
        }
      })
      .catch(function () { /* offline for a moment: try again at the next tick */ })
      .then(function () { window.setTimeout(refresh, every); });
  }

  window.setTimeout(refresh, every);
}());

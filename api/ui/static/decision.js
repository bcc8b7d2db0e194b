// The decision page: the deadline counts down, and an edited value is checked before it
// is sent (the server checks it again). Without this script the page works as rendered.
(function () {
  "use strict";

  // -- the deadline, as a countdown ------------------------------------------------
  function duration(seconds) {
    var whole = Math.round(Math.abs(seconds));
    var parts = [[Math.floor(whole / 86400), "d"], [Math.floor(whole % 86400 / 3600), "h"],
      [Math.floor(whole % 3600 / 60), "min"], [whole % 60, "s"]];
    var shown = parts.filter(function (p) { return p[0]; }).slice(0, 2)
      .map(function (p) { return p[0] + " " + p[1]; });
    return shown.join(" ") || "0 s";
  }

  var countdown = document.getElementById("countdown");
  if (countdown) {
    var due = Date.parse(countdown.getAttribute("data-due"));
    var tick = function () {
      var left = (due - Date.now()) / 1000;
      countdown.textContent = left >= 0
        ? "(in " + duration(left) + ")" : "(overdue by " + duration(left) + ")";
      countdown.classList.toggle("overdue-text", left < 0);
    };
    if (!isNaN(due)) { tick(); window.setInterval(tick, 1000); }
  }

  // -- a review's cards: the arguments open to edit once Edit is chosen, and a message
  // needed for a response --------------------------------------------------------------
  Array.prototype.forEach.call(document.querySelectorAll(".action-card"), function (card) {
    var radios = card.querySelectorAll(".choices input[type=radio]");
    var args = card.querySelectorAll(".action-args input, .action-args textarea, .action-args select");
    var message = card.querySelector("textarea[data-required-for]");
    function follow() {
      var chosen = card.querySelector(".choices input[type=radio]:checked");
      var kind = chosen ? chosen.value : "";
      Array.prototype.forEach.call(args, function (field) { field.disabled = kind !== "edit"; });
      if (message) { message.required = kind === message.getAttribute("data-required-for"); }
    }
    Array.prototype.forEach.call(radios, function (radio) {
      radio.addEventListener("change", follow);
    });
    follow();
  });

  // -- checking a form before it is sent ---------------------------------------------
  function message(field) {
    return document.getElementById(field.id + "-error");
  }

  function check(field) {
    var problem = "";
    if (field.getAttribute("data-json") && field.value.trim() !== "") {
      try { JSON.parse(field.value); } catch (error) {
        problem = "Not valid JSON: " + error.message;
      }
    }
    var pattern = field.getAttribute("data-pattern");
    if (!problem && pattern && field.value !== "") {
      try {
        if (!new RegExp(pattern, "u").test(field.value)) {
          problem = "Does not match the pattern " + pattern;
        }
      } catch (ignored) { /* a pattern this browser cannot read: the server checks it */ }
    }
    field.setCustomValidity(problem);
    var shown = message(field);
    if (shown) {
      var text = field.validity.valid ? "" : field.validationMessage;
      shown.textContent = text;
      shown.hidden = !text;
      field.setAttribute("aria-invalid", text ? "true" : "false");
    }
    return field.validity.valid;
  }

  Array.prototype.forEach.call(document.querySelectorAll("form.validated"), function (form) {
    var fields = form.querySelectorAll("input, textarea, select");
    Array.prototype.forEach.call(fields, function (field) {
      field.addEventListener("input", function () { check(field); });
      field.addEventListener("invalid", function () { check(field); });
    });
    form.addEventListener("submit", function (event) {
      var valid = true;
      Array.prototype.forEach.call(fields, function (field) {
        if (!field.disabled && !check(field)) { valid = false; }
      });
      if (!valid) {
        event.preventDefault();
        form.reportValidity();
      }
    });
  });
}());

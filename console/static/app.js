// hookjet console and portal: progressive enhancement only. Every page
// works without this script; it asks before destructive actions and copies
// a new secret to the clipboard.
"use strict";
document.addEventListener("submit", function (e) {
  var b = e.submitter;
  var msg = b && b.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) {
    e.preventDefault();
  }
});
document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) {
    return;
  }
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (el && navigator.clipboard) {
    navigator.clipboard.writeText(el.textContent).then(function () {
      b.textContent = "Copied";
    });
  }
});

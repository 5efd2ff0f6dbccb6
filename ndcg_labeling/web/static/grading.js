// Keyboard shortcuts of the grading page: digits grade, s skip (with a reason), u undo, ? guideline;
// and of the lead's adjudication page: digits set the final grade, n a note first, j the next item.
// Every action submits one of the page's forms (POST with its CSRF token); the page works without JS.
(function () {
  "use strict";
  var guideline = document.getElementById("guideline");
  var guidelineButton = document.getElementById("guideline-button");
  var reason = document.getElementById("skip-reason");
  var note = document.getElementById("note");
  var nextItem = document.getElementById("next-item");
  var busy = false;

  function toggleGuideline() {
    if (guideline) { guideline.hidden = !guideline.hidden; }
  }
  if (guidelineButton) { guidelineButton.addEventListener("click", toggleGuideline); }

  function submit(button) {
    if (!button || button.disabled || busy) { return; }
    busy = true;  // one action per page: a second key press waits for the next page
    button.click();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var target = event.target;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) {
      if (event.key === "Escape") { target.blur(); }
      return;  // typing a skip reason: Enter submits that form
    }
    var key = event.key;
    if (/^[0-9]$/.test(key)) {
      var button = document.querySelector('button.grade[data-grade="' + key + '"]');
      if (button) { event.preventDefault(); submit(button); }
    } else if (key === "s" && reason) {
      event.preventDefault();
      reason.focus();
    } else if (key === "n" && note) {
      event.preventDefault();
      note.focus();
    } else if (key === "j" && nextItem && !busy) {
      event.preventDefault();
      busy = true;
      window.location.href = nextItem.href;
    } else if (key === "u") {
      event.preventDefault();
      submit(document.getElementById("undo-button"));
    } else if (key === "?") {
      event.preventDefault();
      toggleGuideline();
    } else if (key === "Escape" && guideline && !guideline.hidden) {
      guideline.hidden = true;
    }
  });
}());

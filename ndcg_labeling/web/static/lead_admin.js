// Upload forms of /lead/data: while the browser sends the file and the server imports it, say so, with
// the file's size, and keep the button from being pressed twice.
"use strict";
function sizeText(bytes) {
  if (bytes < 1024) return bytes + " bytes";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
  return (bytes / (1024 * 1024)).toFixed(1) + " MB";
}
document.querySelectorAll("form.upload").forEach(function (form) {
  form.addEventListener("submit", function () {
    var input = form.querySelector("input[type=file]");
    var status = form.querySelector(".importing");
    var file = input && input.files && input.files[0];
    if (!file || !status) return;
    status.querySelector(".what").textContent = "Importing " + file.name + " (" + sizeText(file.size) + ")…";
    status.hidden = false;
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
  });
});

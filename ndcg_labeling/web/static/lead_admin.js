// Upload forms of /lead/data. The file is sent with XMLHttpRequest so that the page can show how much
// of it has been sent, then that the server is importing it (with the file's size); the button cannot
// be pressed twice. The server's answer replaces the page: the summary after a redirect, or the page
// with the importer's one-line error. Without XMLHttpRequest the form posts as usual.
"use strict";
function sizeText(bytes) {
  if (bytes < 1024) return bytes + " bytes";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
  return (bytes / (1024 * 1024)).toFixed(1) + " MB";
}
function showPage(xhr) {
  if (xhr.status >= 200 && xhr.status < 300 && xhr.responseURL && xhr.responseURL.indexOf("/lead/data/") < 0) {
    window.location.assign(xhr.responseURL);  // the summary page the import redirected to
    return;
  }
  history.replaceState(null, "", "/lead/data");
  document.open();
  document.write(xhr.responseText);
  document.close();
}
document.querySelectorAll("form.upload").forEach(function (form) {
  form.addEventListener("submit", function (event) {
    var input = form.querySelector("input[type=file]");
    var status = form.querySelector(".importing");
    var file = input && input.files && input.files[0];
    if (!file || !status) return;
    var what = status.querySelector(".what");
    var bar = status.querySelector("progress");
    var name = file.name + " (" + sizeText(file.size) + ")";
    what.textContent = "Importing " + name + "…";
    status.hidden = false;
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    if (!window.XMLHttpRequest || !window.FormData) return;
    event.preventDefault();
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable) return;
      bar.max = e.total;
      bar.value = e.loaded;
      what.textContent = (e.loaded < e.total ? "Sending " : "Importing ") + name + ": " +
        Math.floor(100 * e.loaded / e.total) + "% sent…";
    });
    xhr.upload.addEventListener("load", function () {
      bar.removeAttribute("value");  // the server reads and checks the file: no measure of that
      what.textContent = "Importing " + name + "…";
    });
    xhr.addEventListener("load", function () { showPage(xhr); });
    xhr.addEventListener("error", function () {
      what.textContent = "The upload of " + name + " failed (the connection broke); nothing was imported.";
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
    });
    xhr.send(new FormData(form));
  });
});

// The chat page's behaviour, from this file only: the page's Content-Security-Policy allows no
// inline script or handler (supportbot.middleware.ContentSecurityPolicyMiddleware).
document.addEventListener("htmx:beforeSwap", function (e) {
  if (e.detail.xhr.status === 422 || e.detail.xhr.status === 429) {
    e.detail.shouldSwap = true;
    e.detail.isError = false;
    e.detail.target = document.getElementById("form-error");
  }
});
document.addEventListener("htmx:afterRequest", function (e) {
  var form = e.detail.elt;
  if (form && form.classList && form.classList.contains("ask-form") && e.detail.successful) {
    form.reset();
    document.getElementById("form-error").textContent = "";
  }
});
document.addEventListener("keydown", function (e) {
  var box = e.target;
  if (box && box.id === "question" && e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    box.form.requestSubmit();
  }
});

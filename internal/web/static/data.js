// The data explorer: each view (model, sort, filters, page) is a page of
// its own, so that its URL can be shared; this file only shows that the
// next one is loading, and catches a filter value without a field before
// the round trip. It runs after app.js (both deferred) and uses window.AP.
"use strict";
(function () {
  var region = document.querySelector("[data-records]");
  var form = document.querySelector("form[data-explorer-form]");
  if (!region || !form) return;
  var loading = region.querySelector("[data-loading]");

  function loadingState(on) {
    if (on) region.setAttribute("aria-busy", "true"); else region.removeAttribute("aria-busy");
    if (loading) loading.hidden = !on;
  }

  form.addEventListener("submit", function (ev) {
    window.AP.clearErrors(form);
    var field = form.querySelector("[name=filter_field]");
    var value = form.querySelector("[name=filter_value]");
    if (value.value.trim() && !field.value) {
      ev.preventDefault();
      window.AP.showError(form, "filter_field", "Choose the field to filter by.");
      return;
    }
    window.AP.busy(form, true);
    loadingState(true);
  });

  // Sorting by a column, paging, removing a filter: a plain link, with the
  // loading state meanwhile (not when it opens elsewhere: a new tab).
  document.addEventListener("click", function (ev) {
    var link = ev.target.closest("a[data-explorer-link]");
    if (!link || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    loadingState(true);
  });

  // Back to this page from the browser's history: not loading any more.
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) return;
    loadingState(false);
    window.AP.busy(form, false);
  });
})();

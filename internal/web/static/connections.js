// The connections page: Disconnect calls the credential service's revoke
// (DELETE /api/v1/credentials/{app}/{provider}, same origin with the
// session cookie) and the card then shows the account as not connected,
// without a reload. Connecting needs no script: it is a link to the
// authorize route. Runs after app.js (both deferred) and uses window.AP.
"use strict";
(function () {
  var list = document.querySelector('[data-list="accounts"]');
  if (!list) return;
  var status = document.getElementById("connections-status");

  function label(el, text) { el.querySelector("[data-label]").textContent = text; }

  // Disconnecting takes two clicks, as revoking a key does: the first
  // asks, the second (within a few seconds) disconnects.
  list.addEventListener("click", function (ev) {
    var button = ev.target.closest("button[data-disconnect]");
    if (!button || button.disabled) return;
    var card = button.closest("[data-account]");
    var slot = card.querySelector("[data-error]");
    slot.textContent = "";
    if (button.dataset.armed !== "true") {
      button.dataset.armed = "true";
      label(button, "Click again to disconnect");
      setTimeout(function () {
        if (button.isConnected && button.dataset.armed === "true") {
          button.dataset.armed = "";
          label(button, "Disconnect");
        }
      }, 5000);
      return;
    }
    button.disabled = true;
    label(button, "Disconnecting…");
    window.AP.api("DELETE", button.dataset.disconnect).then(function (r) {
      if (!r.ok) {
        button.disabled = false;
        button.dataset.armed = "";
        label(button, "Disconnect");
        slot.textContent = "Could not disconnect " + button.dataset.name + ": " + r.data.detail;
        return;
      }
      var pill = card.querySelector("[data-status]");
      pill.className = "status status-none";
      pill.dataset.status = "none";
      pill.textContent = "not connected";
      var health = card.querySelector("[data-health]");
      if (health) health.remove();
      var connect = card.querySelector("a[data-connect]");
      if (connect) label(connect, "Connect");
      // The notice of the return from the provider is no longer true.
      document.querySelectorAll("[data-return-notice]").forEach(function (n) { n.hidden = true; });
      status.textContent = "Disconnected " + button.dataset.name + ".";
      status.hidden = false;
      button.remove();
      // The button had the focus: it goes to what replaces it.
      (connect || status).focus();
    });
  });
})();

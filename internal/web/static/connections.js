// The connections page: Disconnect calls the credential service's revoke
// (DELETE /api/v1/credentials/{app}/{provider}, same origin with the
// session cookie) and the card then shows the account as not connected,
// without a reload. Connecting needs no script: it is a link to the
// authorize route. A card's secret form sets the authenticator's client
// secret (PATCH /api/v1/oauth/authenticators/{id}); the field is emptied
// at once and the secret is never shown back. Runs after app.js (both
// deferred) and uses window.AP.
"use strict";
(function () {
  var list = document.querySelector('[data-list="accounts"]');
  if (!list) return;
  var AP = window.AP;
  var status = document.getElementById("connections-status");

  function label(el, text) { el.querySelector("[data-label]").textContent = text; }

  // Setting the secret: the card shows it set and Connect, disabled until
  // then, becomes the link to the authorize route.
  list.querySelectorAll("form[data-secret-form]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      AP.clearErrors(form);
      var input = form.querySelector('[name="client_secret"]');
      var secret = input.value;
      if (!secret.trim()) { AP.showError(form, "client_secret", "Enter the client secret the provider gave you."); return; }
      AP.busy(form, true);
      AP.api("PATCH", form.dataset.url, JSON.stringify({ client_secret: secret })).then(function (r) {
        AP.busy(form, false);
        if (!r.ok) {
          AP.showError(form, AP.fieldOf(form, r.data) || (r.status === 400 ? "client_secret" : ""), r.data.detail);
          return;
        }
        input.value = "";
        var card = form.closest("[data-account]");
        card.querySelector("[data-secret-state]").textContent = "set";
        var reason = card.querySelector("[data-secret-reason]");
        if (reason) reason.remove();
        var off = card.querySelector("button[data-connect-disabled]");
        var focus = status;
        if (off) {
          var link = document.createElement("a");
          link.className = "button";
          link.href = off.dataset.connectUrl;
          link.dataset.connect = off.dataset.connectDisabled;
          link.append.apply(link, Array.prototype.slice.call(off.childNodes));
          off.replaceWith(link);
          focus = link;
        }
        form.querySelector("button[type=submit]").textContent = "Replace the client secret";
        status.textContent = "Client secret of " + form.dataset.name + " set.";
        status.hidden = false;
        focus.focus();
      });
    });
  });

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

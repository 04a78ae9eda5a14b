// The console's only script: filters the endpoint table as one types, and sends reviews
// to /console/api/review and tool decisions to /console/api/tools as JSON. Every page
// works without it except saving a review or a decision.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const filter = document.getElementById("filter");
  if (filter) liveFilter(filter);
  document.querySelectorAll("article.item[data-review]").forEach(reviewCard);
  document.querySelectorAll("article.item[data-pin]").forEach(pinCard);
});

function pinCard(card) {
  const identity = JSON.parse(card.dataset.pin);
  const message = card.querySelector(".message");
  card.querySelectorAll("button[data-action]").forEach((b) => {
    b.addEventListener("click", async (ev) => {
      ev.preventDefault();
      const action = b.dataset.action;
      card.querySelectorAll("button").forEach((x) => (x.disabled = true));
      try {
        const res = await fetch("/console/api/tools", {
          method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ ...identity, action }), credentials: "same-origin",
        });
        const answer = await res.json().catch(() => ({}));
        if (!res.ok) throw new Error(answer.error || res.status + " " + res.statusText);
        const words = { approve: "Approved: served now", reject: "Rejected: stays held",
          revoke: "Revoked: no longer served" };
        message.textContent = words[action];
        message.classList.remove("failed");
        const shownAs = { approve: "approved", reject: "rejected", revoke: "new" }[action];
        const badge = card.querySelector("h3 .badge");
        if (badge) { badge.textContent = shownAs; badge.className = "badge " + shownAs; }
        card.querySelectorAll(".actions").forEach((e) => e.remove());
      } catch (e) {
        message.textContent = "Not decided: " + e.message;
        message.classList.add("failed");
        card.querySelectorAll("button").forEach((x) => (x.disabled = false));
      }
    });
  });
}

function liveFilter(form) {
  const rows = Array.from(document.querySelectorAll("#endpoints tbody tr"));
  const shown = document.getElementById("shown");
  const apply = () => {
    const f = new FormData(form);
    const api = f.get("api"), method = f.get("method"), state = f.get("description");
    const text = String(f.get("q") || "").trim().toLowerCase();
    let n = 0;
    for (const r of rows) {
      const ok = (!api || r.dataset.api === api) && (!method || r.dataset.method === method) &&
        (!state || (state === "generated" ? r.dataset.generated === "true" : r.dataset.state === state)) && (!text || r.dataset.text.includes(text));
      r.hidden = !ok;
      if (ok) n++;
    }
    if (shown) shown.textContent = n + " matching endpoints";
  };
  form.addEventListener("input", apply);
  form.addEventListener("change", apply);
}

function reviewCard(card) {
  const identity = JSON.parse(card.dataset.review);
  const editor = card.querySelector("form.editor");
  const message = card.querySelector(".message");
  const say = (text, failed) => {
    message.textContent = text;
    message.classList.toggle("failed", !!failed);
  };
  const send = async (action, value) => {
    const body = { api: identity.api, method: identity.method, path: identity.path,
      field: identity.field, action, expected: identity.expected };
    if (identity.param) body.param = identity.param;
    if (action === "edit") body.value = value;
    card.querySelectorAll("button").forEach((b) => (b.disabled = true));
    try {
      const res = await fetch("/console/api/review", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body), credentials: "same-origin",
      });
      const answer = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(answer.error || res.status + " " + res.statusText);
      const words = { accept: "Accepted", edit: "Saved your edit", reject: "Rejected",
        restore: "Restored (the next shortlist enrich writes it again)" };
      say(words[action] + " in " + answer.saved.file);
      card.classList.remove("pending", "rejected");
      card.classList.add("saved");
      const badge = card.querySelector("h3 .badge");
      const shownAs = { reject: "rejected", restore: "restored" }[action] || "reviewed";
      if (badge) { badge.textContent = shownAs; badge.className = "badge " + shownAs; }
      if (action === "edit") {
        const shown = card.querySelector(".value");
        shown.replaceChildren();
        const lines = Array.isArray(value) ? value : [typeof value === "string" ? value : JSON.stringify(value)];
        for (const line of lines) { const p = document.createElement("p"); p.textContent = line; shown.append(p); }
      }
      if (action === "reject") card.querySelector(".value").classList.add("quiet");
      card.querySelectorAll(".actions, form.editor").forEach((e) => e.remove());
    } catch (e) {
      say("Not saved: " + e.message, true);
      card.querySelectorAll("button").forEach((b) => (b.disabled = false));
    }
  };
  card.querySelectorAll("button[data-action]").forEach((b) => {
    b.addEventListener("click", (ev) => {
      ev.preventDefault();
      const action = b.dataset.action;
      if (action === "edit") { editor.hidden = false; editor.querySelector("textarea").focus(); return; }
      if (action === "cancel") { editor.hidden = true; return; }
      if (action === "save") {
        const text = editor.querySelector("textarea").value;
        let value = text;
        if (identity.field === "questions") value = text.split("\n").map((s) => s.trim()).filter(Boolean);
        if (identity.field === "example") { try { value = JSON.parse(text); } catch (_) { value = text; } }
        send("edit", value);
        return;
      }
      send(action);
    });
  });
}

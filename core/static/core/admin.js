// Copy buttons beside short ids: the whole id to the clipboard, with a short confirmation.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy-id");
  if (!button) return;
  event.preventDefault();
  const done = () => {
    button.classList.add("copied");
    setTimeout(() => button.classList.remove("copied"), 1500);
  };
  const text = button.dataset.copy;
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => window.prompt("Copy the id:", text));
  } else {
    window.prompt("Copy the id:", text);
  }
});

// A log box opens at its end: the newest lines, where a failure's reason is.
document.addEventListener("DOMContentLoaded", () => {
  for (const box of document.querySelectorAll("pre.log")) box.scrollTop = box.scrollHeight;
});

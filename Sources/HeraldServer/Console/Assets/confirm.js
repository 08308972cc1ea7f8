// Forms that remove or revoke something ask first (data-confirm holds the question).
"use strict";
document.addEventListener("submit", (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

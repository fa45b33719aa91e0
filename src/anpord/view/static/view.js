// anpord view: the little the pages need beyond HTML. Text is only ever inserted with
// textContent, never as HTML, so a value from a case or an agent cannot become markup.
"use strict";

// "show all": fetch a cut value's full text and put it in place of the cut one.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.show-all");
  if (!button) return;
  const target = button.previousElementSibling;
  if (!target) return;
  button.disabled = true;
  button.textContent = "loading…";
  try {
    const response = await fetch(button.dataset.src, { credentials: "same-origin" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    target.textContent = await response.text();
    target.removeAttribute("data-cut");
    button.remove();
  } catch (error) {
    button.disabled = false;
    button.textContent = `could not load it (${error.message}); try again`;
  }
});

// The grid's filters apply as soon as one is ticked (the Apply button stays for the search).
document.addEventListener("change", (event) => {
  const box = event.target;
  if (box instanceof HTMLInputElement && box.type === "checkbox" && box.form && box.form.classList.contains("filters")) {
    box.form.requestSubmit();
  }
});

// "/" jumps to the case search, as in many code browsers.
document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.target instanceof HTMLInputElement) return;
  const search = document.querySelector("form.filters input[type=search]");
  if (search) {
    event.preventDefault();
    search.focus();
    search.select();
  }
});

// lvegit site: the LVE filters. The only script a page runs (its Content-Security-Policy allows no other).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const box of document.querySelectorAll("[data-filters]")) {
    const table = document.getElementById(box.dataset.filters);
    const count = document.getElementById(box.dataset.count);
    const controls = Array.from(box.querySelectorAll("[data-filter]"));
    const rows = Array.from(table.tBodies[0].rows);
    const apply = () => {
      const wanted = controls
        .map((control) => [control.dataset.filter, control.value.trim().toLowerCase()])
        .filter(([, value]) => value !== "");
      let shown = 0;
      for (const row of rows) {
        const visible = wanted.every(([key, value]) => {
          if (key === "text") return row.dataset.text.includes(value);
          if (key === "taxonomy") return row.dataset.taxonomy.split(" ").includes(value); // or an entry below
          return row.dataset[key].toLowerCase() === value;
        });
        row.hidden = !visible;
        shown += visible ? 1 : 0;
      }
      count.textContent = `${shown} of ${rows.length} LVEs shown`;
    };
    for (const control of controls) {
      control.addEventListener("input", apply);
      control.addEventListener("change", apply);
    }
    box.hidden = false; // the filters work only with this script, so they show only when it runs
  }
});

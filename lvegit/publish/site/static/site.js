// lvegit site: the LVE filters and sortable columns. The only script a page runs (its Content-Security-Policy
// allows no other).
"use strict";

function filterRows(box) {
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
        if (key === "affects") return row.dataset.affects.split("\n").includes(value);
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

// A header with data-sort becomes a button that sorts the rows by its column, ascending, then descending.
// Numbers sort by the cell's data-value (or its text); ids and text in natural order (LVE-2026-10000
// after LVE-2026-9999); rows without an id last.
function sortable(table) {
  const headers = Array.from(table.tHead.rows[0].cells);
  const body = table.tBodies[0];
  for (const [column, header] of headers.entries()) {
    const kind = header.dataset.sort;
    if (!kind) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    button.textContent = header.textContent;
    header.replaceChildren(button);
    button.addEventListener("click", () => {
      const ascending = header.getAttribute("aria-sort") !== "ascending";
      for (const other of headers) other.removeAttribute("aria-sort");
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const key = (row) => {
        const cell = row.cells[column];
        return cell.dataset.value ?? cell.textContent.trim();
      };
      const compare = (a, b) => {
        if (kind === "number") return parseFloat(key(a)) - parseFloat(key(b));
        if (kind === "id" && !a.cells[column].querySelector("code") !== !b.cells[column].querySelector("code")) {
          return a.cells[column].querySelector("code") ? -1 : 1; // without an id: last either way
        }
        return key(a).localeCompare(key(b), "en", { numeric: true });
      };
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const order = compare(a, b);
        const missing = kind === "id" && !a.cells[column].querySelector("code") !== !b.cells[column].querySelector("code");
        return missing || ascending ? order : -order;
      });
      body.append(...rows);
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const box of document.querySelectorAll("[data-filters]")) filterRows(box);
  for (const table of document.querySelectorAll("table.lves")) sortable(table);
});

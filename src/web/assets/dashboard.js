/* global document, window, navigator */
// Small enhancements of the dashboard; every page works without them. Served from /assets
// because the pages' Content-Security-Policy allows no inline script.

// "Copy" buttons: <button data-copy="ID" hidden> copies the text of the element with that id.
for (const button of document.querySelectorAll('button[data-copy]')) {
  button.hidden = false;
  button.addEventListener('click', async () => {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const text = source.textContent.trim();
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch {
      // No clipboard API (plain http on a non-local host): select the text and copy it the old way.
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      copied = document.execCommand('copy');
    }
    const status = document.getElementById(`${button.dataset.copy}-status`);
    if (status) status.textContent = copied ? 'Copied to the clipboard.' : 'Select the text and copy it.';
    button.textContent = copied ? 'Copied' : 'Copy';
  });
}


// Destructive actions ask first: <form data-confirm="Question?"> submits only when confirmed.
for (const form of document.querySelectorAll('form[data-confirm]')) {
  form.addEventListener('submit', (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
}

// On a narrow screen the tabs and the chart scroll sideways: show the current tab, and today.
const currentTab = document.querySelector('nav.tabs a[aria-current="page"]');
if (currentTab) {
  const tabs = currentTab.parentElement;
  tabs.scrollLeft = currentTab.offsetLeft - (tabs.clientWidth - currentTab.offsetWidth) / 2;
}
for (const scroller of document.querySelectorAll('.chart-scroll')) scroller.scrollLeft = scroller.scrollWidth;

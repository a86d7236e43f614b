/* global document */
// Connect flow: "Connect" opens the confirmation dialog on the same page. Without this script
// (or without <dialog> support) the form loads the confirmation as its own page instead.
const choose = document.getElementById('connect-choose');
const dialog = document.getElementById('consent-dialog');

if (choose && dialog && typeof dialog.showModal === 'function') {
  choose.addEventListener('submit', (event) => {
    // The submit event fires only once the browser's "required" check found a checked program.
    const choice = choose.querySelector('input[name="program"]:checked');
    if (!choice) return;
    event.preventDefault();
    dialog.querySelector('input[name="program"]').value = choice.value;
    dialog.querySelector('[data-program-name]').textContent = choice.dataset.name;
    dialog.showModal();
  });
}

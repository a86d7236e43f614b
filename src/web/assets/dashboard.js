/* global document, window, navigator, FormData, URLSearchParams, setTimeout, clearTimeout */
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


// Destructive actions ask first: <form data-confirm="Question?"> submits only when confirmed,
// and then sends confirmed=yes, the answer a route that asks on a page of its own without
// script (deleting a webhook endpoint) looks for.
for (const form of document.querySelectorAll('form[data-confirm]')) {
  form.addEventListener('submit', (event) => {
    if (!window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      return;
    }
    if (!form.querySelector('input[name="confirmed"]')) {
      const answer = document.createElement('input');
      answer.type = 'hidden';
      answer.name = 'confirmed';
      answer.value = 'yes';
      form.append(answer);
    }
  });
}

// Affiliate fields: as a name is typed, the suggestions become the affiliates matching it (the
// page lists only the newest 50). Without script the page's own suggestions stay, and a name
// sent with the form comes back with the affiliates matching it to choose from.
for (const input of document.querySelectorAll('input[data-affiliate-search]')) {
  const list = document.getElementById(input.getAttribute('list'));
  if (!list) continue;
  let timer;
  let asked = '';
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const text = input.value.trim();
    if (text.length < 2 || text === asked) return;
    timer = setTimeout(async () => {
      asked = text;
      try {
        const answer = await fetch(`${input.dataset.affiliateSearch}?q=${encodeURIComponent(text)}`, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
        if (!answer.ok || input.value.trim() !== text) return;
        const choices = await answer.json();
        list.replaceChildren(
          ...choices.map(({ value, label }) => {
            const option = document.createElement('option');
            option.value = value;
            option.textContent = label;
            return option;
          }),
        );
      } catch {
        // Keep the suggestions there are.
      }
    }, 200);
  });
}

// On a narrow screen the tabs and the chart scroll sideways: show the current tab, and today.
const currentTab = document.querySelector('nav.tabs a[aria-current="page"]');
if (currentTab) {
  const tabs = currentTab.parentElement;
  tabs.scrollLeft = currentTab.offsetLeft - (tabs.clientWidth - currentTab.offsetWidth) / 2;
}
for (const scroller of document.querySelectorAll('.chart-scroll')) scroller.scrollLeft = scroller.scrollWidth;

// The webhook form: while "All events" is checked the single types are out of the choice
// (disabled boxes are not sent). Without script the server refuses both at once.
for (const all of document.querySelectorAll('input[data-events-all]')) {
  const group = all.closest('fieldset');
  const sync = () => {
    for (const box of group.querySelectorAll('input[name="events"]')) if (box !== all) box.disabled = all.checked;
  };
  all.addEventListener('change', sync);
  sync();
}

// "Send test": the same form, posted with its CSRF token asking for JSON; the outcome of the
// delivery then shows beside the button, without leaving the page. Without script the form
// posts and the endpoint's page lists the attempt.
const TEST_POLL_MS = 400;
/** About 20 s of polls: past the worker's first attempt (10 s time limit) with room to spare. */
const TEST_POLLS = 50;

const utc = (iso) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

/** What a delivery's state says, or null while it waits for its first attempt. */
function testOutcome(result) {
  const attempt = result.lastAttempt;
  const answer = !attempt ? '' : attempt.statusCode !== null ? `HTTP ${attempt.statusCode} in ${attempt.durationMs} ms` : `no response (${attempt.error ?? 'unknown error'})`;
  if (result.state === 'delivered') return { kind: 'ok', text: `Delivered: ${answer}.` };
  if (result.state === 'failed') return { kind: 'bad', text: `Failed: ${answer}. Tandem gave up on this event.` };
  if (result.state === 'held') return { kind: 'bad', text: 'Not sent: the endpoint is disabled.' };
  if (attempt) return { kind: 'bad', text: `Failed: ${answer}. Tandem tries again at ${utc(result.nextAttemptAt)}.` };
  return null;
}

for (const form of document.querySelectorAll('form.send-test')) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const button = form.querySelector('button');
    let status = form.nextElementSibling;
    if (!status || !status.classList.contains('test-result')) {
      status = document.createElement('span');
      status.className = 'test-result';
      status.setAttribute('role', 'status');
      form.after(status);
    }
    const say = (kind, text) => {
      status.dataset.result = kind;
      status.textContent = text;
    };
    button.disabled = true;
    say('pending', 'Sending a test event…');
    try {
      const sent = await fetch(form.action, { method: 'POST', headers: { accept: 'application/json' }, body: new URLSearchParams(new FormData(form)), credentials: 'same-origin' });
      if (!sent.ok) {
        say('bad', sent.status === 403 ? 'Not sent: this page has expired. Reload it and try again.' : `Not sent (HTTP ${sent.status}). Reload the page and try again.`);
        return;
      }
      const { result } = await sent.json();
      for (let poll = 1; ; poll++) {
        await new Promise((resolve) => setTimeout(resolve, TEST_POLL_MS));
        const answer = await fetch(result, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
        if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
        const delivery = await answer.json();
        const outcome = testOutcome(delivery);
        if (outcome) return say(outcome.kind, outcome.text);
        if (poll >= TEST_POLLS) {
          return say(
            'pending',
            delivery.worker
              ? 'Queued, not sent yet: the webhook worker is busy. The attempt will show on the endpoint’s page.'
              : 'Queued, not sent yet: this server runs no webhook worker (WORKER=off), so a `tandem worker` process must be running.',
          );
        }
      }
    } catch {
      say('bad', 'Could not follow the test event: see the endpoint’s page for its attempts.');
    } finally {
      button.disabled = false;
    }
  });
}

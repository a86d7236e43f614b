// What /docs adds to Swagger UI, served as its own files (the page's policy allows no inline
// style or script): a stylesheet and a script that fix the accessibility faults Swagger UI's
// configuration cannot (axe-core, WCAG 2.1 AA, checked by test/browser/api-docs.test.ts).

/**
 * Colours with at least 4.5:1 contrast where Swagger UI's fall short (white on its light method
 * colours, its green Authorize, grey badges, light-blue links, its code theme's numbers), code
 * blocks that wrap, and a phone's width without sideways scrolling.
 */
export const DOCS_STYLESHEET = `
.swagger-ui .opblock.opblock-get .opblock-summary-method { background: #0f6ab4; }
.swagger-ui .opblock.opblock-post .opblock-summary-method { background: #187a4d; }
.swagger-ui .opblock.opblock-put .opblock-summary-method { background: #a85400; }
.swagger-ui .opblock.opblock-delete .opblock-summary-method { background: #c62828; }
.swagger-ui .opblock.opblock-patch .opblock-summary-method { background: #0d7561; }
.swagger-ui .btn.authorize { color: #187a4d; border-color: #187a4d; }
.swagger-ui .btn.authorize svg { fill: #187a4d; }
.swagger-ui .info .title small { background: #5c6370; }
.swagger-ui .info .title small.version-stamp { background: #4d7a00; }
.swagger-ui .info .title small pre { color: #fff; }
.swagger-ui .info a, .swagger-ui .info .url, .swagger-ui a.nostyle, .swagger-ui .renderedMarkdown a { color: #0f6ab4; }
.swagger-ui .microlight, .swagger-ui .microlight code, .swagger-ui .curl, .swagger-ui .highlight-code pre {
  white-space: pre-wrap !important;
  word-break: break-all;
}
.swagger-ui .parameter__in, .swagger-ui .parameter__deprecated { color: #5c6370; }
.swagger-ui .json-schema-2020-12-expand-deep-button { color: #4a4a4a; }
.swagger-ui .btn.try-out__btn.cancel { color: #c62828; border-color: #c62828; }
.swagger-ui .btn.execute, .swagger-ui .btn.execute:hover { background-color: #0f6ab4; border-color: #0f6ab4; transition: none; }
.swagger-ui .download-contents { background: #5c6370; }
.swagger-ui .json-schema-2020-12__constraint--string { background-color: #8a5a00; }
.swagger-ui .json-schema-2020-12__attribute--muted { color: #6b6b6b; }
.swagger-ui .json-schema-2020-12__attribute--warning { color: #c62828; }
/* The code theme's numbers (#d36363) and comments (#888) on its #333: lighter shades. */
.swagger-ui .microlight span[style*="rgb(211, 99, 99)"] { color: #f08d8d !important; }
.swagger-ui .microlight span[style*="rgb(136, 136, 136)"] { color: #aaa !important; }
/* A phone's width: the responses table drops its links column (this API has no links). */
@media (max-width: 600px) {
  .swagger-ui .response-col_links { display: none; }
  /* Long words (error codes, field names) break rather than widen the responses table. */
  .swagger-ui .renderedMarkdown code, .swagger-ui .response-controls select { overflow-wrap: anywhere; max-width: 100%; }
  /* A resource's description under its name, not squeezed beside it. */
  .swagger-ui .opblock-tag { flex-wrap: wrap; }
  .swagger-ui .opblock-tag small { order: 2; flex-basis: 100%; padding: 0 0 10px; }
}
`;

/**
 * Applied to whatever Swagger UI renders, when it renders it: names for its unnamed controls
 * (icon buttons, selects and the body editor without a label; a name it gave is left alone),
 * Logout's name containing its text, the authorization dialog announced as a dialog, headings
 * in order under the title, code blocks reachable from the keyboard, and a main landmark.
 */
export const DOCS_SCRIPT = `(() => {
  'use strict';
  const NAMES = [
    ['#servers', 'Server'],
    ['select.examples-select-element', 'Example'],
    ['select.content-type', 'Media type'],
    ['.copy-to-clipboard button', 'Copy to clipboard'],
    ['button.close-modal', 'Close the dialog'],
    ['textarea.body-param__text', 'Request body'],
    ['button.json-schema-2020-12-accordion', 'Show or hide the schema'],
  ];
  const FIELDS = ['SELECT', 'TEXTAREA', 'INPUT'];
  function label(root) {
    for (const [selector, name] of NAMES) {
      for (const element of root.querySelectorAll(selector)) {
        if (element.hasAttribute('aria-label')) continue;
        // A field is named by its labels (a select's own text is its options', which a label
        // wrapping it holds too); a button by its text.
        const named = FIELDS.includes(element.tagName)
          ? [...element.labels].some((l) => l.textContent.replace(element.textContent, '').trim())
          : element.textContent.trim();
        if (!named) element.setAttribute('aria-label', name);
      }
    }
    // The authorization dialog is announced as one, named by its heading.
    for (const dialog of root.querySelectorAll('.modal-ux:not([role])')) {
      const heading = dialog.querySelector('.modal-ux-header h3');
      if (heading && !heading.id) heading.id = 'docs-dialog-title';
      dialog.setAttribute('role', 'dialog');
      dialog.setAttribute('aria-modal', 'true');
      if (heading) dialog.setAttribute('aria-labelledby', heading.id);
    }
    // An input named after its id ("auth-bearer-value") has a visible label that says more.
    for (const input of root.querySelectorAll('input[aria-label][id]')) {
      if (input.getAttribute('aria-label') === input.id && [...input.labels].some((l) => l.textContent.trim())) input.removeAttribute('aria-label');
    }
    // Swagger UI's headings go from its title (h1) to h3: one level up each, in order.
    for (const heading of root.querySelectorAll('#swagger-ui :is(h3, h4, h5, h6):not([aria-level])')) heading.setAttribute('aria-level', String(Number(heading.tagName[1]) - 1));
    // A code block that scrolls must be reachable from the keyboard.
    for (const block of root.querySelectorAll('pre.microlight, pre.curl')) if (!block.hasAttribute('tabindex')) block.setAttribute('tabindex', '0');
    // "Logout" is announced as "Remove authorization": the name must contain what is shown.
    for (const button of root.querySelectorAll('button[aria-label="Remove authorization"]')) button.setAttribute('aria-label', button.textContent.trim() + ': remove authorization');
  }
  // The whole page is the reference: its main landmark.
  document.getElementById('swagger-ui')?.setAttribute('role', 'main');
  const observer = new MutationObserver(() => label(document));
  observer.observe(document.documentElement, { childList: true, subtree: true });
  label(document);
})();
`;

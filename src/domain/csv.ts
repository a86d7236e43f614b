// CSV files people open in a spreadsheet (RFC 4180, comma-separated, CRLF lines). A spreadsheet
// does not always read them with a comma: in much of Europe it splits at `;`, some tools at a tab
// or `|`, and a quote in the middle of a field is then just a character. So a cell of people's
// text (a name, a note) is made safe for every one of those readings, not only for the comma:
// - it is quoted whenever it holds any of those separators, a quote or a line break;
// - a formula start — = + - @, a tab or a carriage return, or the full-width ＝ ＋ － ＠ that
//   East Asian spreadsheets read as their ASCII forms — gets a ' before it at the start of the
//   cell and after every separator or line break inside it (spaces and quotes in between do
//   not hide it), so `Ann;=1+1;` is `"Ann;'=1+1;"` and no reading of the line finds a formula.
// Numbers are written as they are. A machine field (machineField: an amount, an id, an e-mail
// address — something Tandem wrote or validated, that a payment provider reads back exactly)
// keeps a leading + or - when nothing after it could make a formula do anything; otherwise it
// is treated as text (docs/security.md, "CSV files").

/** Where a spreadsheet may split a line or a record: comma, semicolon, tab, pipe, line breaks. */
const SEPARATOR = /[,;\t|\r\n]/;
/** Where a formula would start: the cell's start or just after a separator, then spaces or quotes, then = + - @ (ASCII or full-width), a tab or a carriage return. */
const FORMULA_START = /(?<=^|[,;\t|\r\n])(?=[ "]*[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20])/g;
/**
 * A machine field written exactly although it starts with + or -: the rest is letters, digits
 * and . _ % + - @ ' only — an e-mail address or a decimal amount, never a function call (no
 * parentheses), another program's data (no | or !) or a separator.
 */
const PLAIN_SIGNED = /^[+-][\p{L}\p{N}._%'][\p{L}\p{N}._%+\-@']*$/u;

/** A field Tandem wrote or validated itself, written exactly when it may be (see PLAIN_SIGNED). */
export interface CsvMachineField {
  readonly machine: string;
}

export type CsvValue = string | number | null | CsvMachineField;

/** Marks `text` as a machine field: an amount, an id, a currency, a payout recipient's address. */
export function machineField(text: string): CsvMachineField {
  return { machine: text };
}

function quoted(text: string): string {
  return SEPARATOR.test(text) || text.includes('"') ? `"${text.replace(/"/g, '""')}"` : text;
}

/** People's text as a cell: every formula start neutralised, quoted when it holds a separator or quote. */
function textCell(text: string): string {
  return quoted(text.replace(FORMULA_START, "'"));
}

/** One CSV cell: text made formula-safe for every common separator, a number as it is, a machine field exact when it is plain. */
export function csvCell(value: CsvValue): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return textCell(value);
  return PLAIN_SIGNED.test(value.machine) ? value.machine : textCell(value.machine);
}

/** One CSV line, CRLF-terminated. */
export function csvLine(values: CsvValue[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

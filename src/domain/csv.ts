// CSV files people open in a spreadsheet (RFC 4180). A text cell that a spreadsheet would read
// as a formula (starting with =, +, -, @, a tab or a carriage return) is prefixed with ', so a
// customer's name can never run as a formula on the merchant's machine.

function formulaSafe(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/** One CSV cell: text made formula-safe, quoted when it holds a comma, quote or line break. */
export function csvCell(value: string | number | null): string {
  if (value === null) return '';
  const text = typeof value === 'number' ? String(value) : formulaSafe(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV line, CRLF-terminated. */
export function csvLine(values: (string | number | null)[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}

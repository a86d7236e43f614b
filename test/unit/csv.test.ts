// CSV cells (issue 29 item 8): a cell of people's text can run as a formula in no spreadsheet,
// whatever separator it splits lines at (comma, semicolon, tab, pipe); machine fields of payout
// files keep a leading + or - that a payment provider needs. Pure rule: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { csvCell, csvLine, machineField } from '../../src/domain/csv.ts';

/** The fields a spreadsheet reads from `line` when it splits at `separator` (RFC 4180 quotes only at a field's start, as spreadsheets do). */
function fieldsAt(line: string, separator: string): string[] {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i++;
      while (i < line.length) {
        if (line[i] === '"' && line[i + 1] === '"') {
          field += '"';
          i += 2;
        } else if (line[i] === '"') {
          i++;
          break;
        } else field += line[i++];
      }
      // Whatever follows a closing quote up to the separator stays in the field.
      while (i < line.length && line[i] !== separator) field += line[i++];
    } else {
      while (i < line.length && line[i] !== separator) field += line[i++];
    }
    fields.push(field);
    if (i >= line.length) return fields;
    i++;
  }
}

/** Whether a spreadsheet would read the field as a formula: = + - @ (or full-width) first, after spaces. */
const isFormula = (field: string) => /^[ \r\n]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/.test(field);

const HOSTILE = [
  'Ann;=1+1;',
  '=HYPERLINK("http://evil.example","x")',
  '+1+1',
  '-2+3+cmd|\' /C calc\'!A0',
  '@SUM(1)',
  '\t=1',
  '\r=1',
  'Ann,=1',
  'Ann\t=1',
  'Ann|=1',
  'Ann\n=1',
  'Ann\r\n+1',
  'Ann; =1',
  'Ann;"=1+1"',
  'Ann; "=1"',
  'Ann;;=1',
  'Ann\t\t=1',
  '\uFF1D1+1',
  'Ann;\uFF0B1',
  'Ann;\uFF20SUM(1)',
  'Ann;-1',
  ' =1',
];

describe('csvCell: text', () => {
  it('neutralises a formula start at the start of the cell and after every separator in it', () => {
    assert.equal(csvCell('Ann;=1+1;'), `"Ann;'=1+1;"`);
    assert.equal(csvCell('=1+1'), `'=1+1`);
    assert.equal(csvCell('+1'), `'+1`);
    assert.equal(csvCell('-1'), `'-1`);
    assert.equal(csvCell('@SUM(1)'), `'@SUM(1)`);
    assert.equal(csvCell('\t=1'), `"'\t'=1"`);
    assert.equal(csvCell('\r=1'), `"'\r'=1"`);
    assert.equal(csvCell('Ann|=1'), `"Ann|'=1"`);
    assert.equal(csvCell('Ann\t=1'), `"Ann\t'=1"`);
    assert.equal(csvCell('Ann\n=1'), `"Ann\n'=1"`);
    assert.equal(csvCell('Ann; =1'), `"Ann;' =1"`);
    assert.equal(csvCell('Ann;"=1"'), `"Ann;'""=1"""`);
    assert.equal(csvCell('Ann\t\t=1'), `"Ann\t'\t'=1"`);
    assert.equal(csvCell('\uFF1D1+1'), `'\uFF1D1+1`);
    assert.equal(csvCell('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  });

  it('quotes a cell holding any common separator, a quote or a line break, and nothing else', () => {
    for (const separator of [',', ';', '\t', '|', '"', '\r', '\n']) {
      const cell = csvCell(`a${separator}b`);
      assert.ok(cell.startsWith('"') && cell.endsWith('"'), JSON.stringify(cell));
    }
    assert.equal(csvCell('Jane Cooper'), 'Jane Cooper');
    assert.equal(csvCell('Jean-Luc'), 'Jean-Luc', 'a hyphen inside a word starts nothing');
    assert.equal(csvCell('jane+news@example.com'), 'jane+news@example.com');
    assert.equal(csvCell('Ann, Bob'), '"Ann, Bob"');
    assert.equal(csvCell(''), '');
    assert.equal(csvCell(null), '');
  });

  it('leaves no formula in any field, whichever separator the spreadsheet splits at', () => {
    for (const text of HOSTILE) {
      const line = csvLine(['id-1', text, 'end']).slice(0, -2);
      for (const separator of [',', ';', '\t', '|']) {
        // A line break inside the cell may end the record when the quotes are not read as quotes.
        for (const record of line.split(/\r\n|\r|\n/)) {
          for (const field of fieldsAt(record, separator)) assert.ok(!isFormula(field), `${JSON.stringify(text)} split at ${JSON.stringify(separator)} gives ${JSON.stringify(field)} in ${JSON.stringify(line)}`);
        }
      }
    }
  });

  it('reads back what was written when split at the comma (the text, with a quote before each formula start)', () => {
    assert.deepEqual(fieldsAt(csvLine(['Ann;=1+1;', 'x,y', 'say "hi"']).slice(0, -2), ','), ["Ann;'=1+1;", 'x,y', 'say "hi"']);
  });
});

describe('csvCell: numbers and machine fields', () => {
  it('writes numbers as they are', () => {
    assert.equal(csvCell(-5), '-5');
    assert.equal(csvCell(12.5), '12.5');
    assert.equal(csvLine(['a', 1, null, -2]), 'a,1,,-2\r\n');
  });

  it('keeps a leading + or - of an e-mail address or an amount', () => {
    assert.equal(csvCell(machineField('+jane@example.com')), '+jane@example.com');
    assert.equal(csvCell(machineField('-jane.o\'neil@example.com')), "-jane.o'neil@example.com");
    assert.equal(csvCell(machineField('-10.00')), '-10.00');
    assert.equal(csvCell(machineField('20.00')), '20.00');
    assert.equal(csvCell(machineField('jane@example.com')), 'jane@example.com');
  });

  it('treats a machine field that could make a working formula as text', () => {
    assert.equal(csvCell(machineField('=1+1@example.com')), `'=1+1@example.com`);
    assert.equal(csvCell(machineField("+cmd|'/Ccalc'!A0@example.com")), `"'+cmd|'/Ccalc'!A0@example.com"`);
    assert.equal(csvCell(machineField('+HYPERLINK(1)@x.co')), `'+HYPERLINK(1)@x.co`);
    assert.equal(csvCell(machineField('@x.co')), `'@x.co`);
    assert.equal(csvCell(machineField('+-x@x.co')), `'+-x@x.co`);
    assert.equal(csvCell(machineField('a;=1@x.co')), `"a;'=1@x.co"`);
    for (const text of HOSTILE) {
      const line = csvLine([machineField(text)]).slice(0, -2);
      for (const separator of [',', ';', '\t', '|']) {
        for (const record of line.split(/\r\n|\r|\n/)) {
          for (const field of fieldsAt(record, separator)) {
            // A kept sign is followed by plain characters only: no call, no reference, no separator.
            assert.ok(!isFormula(field) || /^[+-][\p{L}\p{N}._%'][\p{L}\p{N}._%+\-@']*$/u.test(field), `${JSON.stringify(text)} gives ${JSON.stringify(field)}`);
          }
        }
      }
    }
  });
});

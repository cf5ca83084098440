/**
 * The status page's script (src/exporters/ui/assets/app.js) is checked by the compiler with the
 * DOM's types and against the document it reads: its own tsconfig.json finds nothing wrong, and
 * the same check, handed a copy that reads a field /api/v1/status does not have or passes a
 * possibly-missing element on, names each mistake. (`npm run build` runs the same check.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from '../../helpers.js';

const DIR = join(ROOT, 'src/exporters/ui/assets');
const APP = join(DIR, 'app.js');

let previous: ts.Program | undefined;

/** The page check's diagnostics, with app.js's text replaced by `edit`'s (nothing written to disk). */
function check(edit: (text: string) => string = (t) => t): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(DIR, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  })!;
  assert.deepEqual(parsed.fileNames, [APP]);
  const host = ts.createCompilerHost(parsed.options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (file, language, ...rest) =>
    file === APP ? ts.createSourceFile(file, edit(readFileSync(APP, 'utf8')), language) : read(file, language, ...rest);
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, host, oldProgram: previous });
  previous = program;
  return ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${d.file.fileName.slice(ROOT.length)}: ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
}

test('the page script type-checks with the DOM and the status document types', { timeout: 180_000 }, () => {
  assert.deepEqual(check(), []);
});

test('the check names a field the status document lacks and an element that may be missing', { timeout: 180_000 }, () => {
  const text = readFileSync(APP, 'utf8');
  assert.ok(text.includes('fmtNum(doc.inFlight, '), 'the script reads doc.inFlight');
  const field = check((t) => t.replace('fmtNum(doc.inFlight, ', 'fmtNum(doc.inFlightNow, '));
  assert.equal(field.length, 1, field.join('\n'));
  assert.match(field[0]!, /app\.js: Property 'inFlightNow' does not exist on type 'StatusDocument'/);
  const missing = check((t) => t.replace("var s = $('summary');", "var s = document.getElementById('summary');"));
  assert.ok(missing.length > 0 && missing.every((m) => /app\.js: 's' is possibly 'null'/.test(m)), missing.join('\n'));
});

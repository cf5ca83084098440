/** npm run docs: regenerates README.md's flag and metric tables from the code. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderReadme, seriesFacts } from './readme-tables.js';
import { renderBottleneckDoc } from './bottleneck-doc.js';
import { readSloConfig } from '../src/ops/rules-command.js';

const path = new URL('../../README.md', import.meta.url);
const slos = readSloConfig(new URL('../../examples/infermeter.yaml', import.meta.url).pathname);
writeFileSync(path, renderReadme(readFileSync(path, 'utf8'), await seriesFacts(slos)));
console.log('README.md tables regenerated');
const bottleneck = new URL('../../docs/bottleneck.md', import.meta.url);
writeFileSync(bottleneck, renderBottleneckDoc(readFileSync(bottleneck, 'utf8')));
console.log('docs/bottleneck.md tables regenerated');

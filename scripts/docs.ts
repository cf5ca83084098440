/** npm run docs: regenerates README.md's flag and metric tables from the code. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderReadme } from '../src/lib/readme-tables.js';

const path = new URL('../../README.md', import.meta.url);
writeFileSync(path, renderReadme(readFileSync(path, 'utf8')));
console.log('README.md tables regenerated');

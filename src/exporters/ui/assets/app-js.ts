/**
 * The status page's script as served at /ui/app.js: app.js beside this file, a JavaScript
 * module type-checked by the tsconfig.json beside it and compiled into dist/ by the build (the
 * root tsconfig.json lists it), so the package and the image ship it with this module.
 */
import { readFileSync } from 'node:fs';

/** The listener serves no source maps: the compiled file's link to its map (kept in dist/ for debugging) is left out. */
export const APP_JS = readFileSync(new URL('./app.js', import.meta.url), 'utf8').replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');

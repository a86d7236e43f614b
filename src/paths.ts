// The files the code reads from beside itself, all named from this one module. It sits at the
// top of src/ (dist/paths.js once compiled), the depth of the one-file bundle dist/tandem.js
// (scripts/build.mjs), so each path holds whether this module runs alone or inside the bundle.

/** The dashboard's static files (styles, scripts, icons) and the click tracker. */
export const ASSETS_DIR = new URL('./web/assets/', import.meta.url);

/** The package's own package.json (its version). */
export const PACKAGE_JSON = new URL('../package.json', import.meta.url);

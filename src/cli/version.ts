/** The package's version, for `clarity-cache --version` (bundled into dist/cli.mjs at build time). */
import pkg from '../../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;

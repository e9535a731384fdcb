// One sha256 for every runtime: the package.json "imports" map sends `#sha256` to
// node:crypto under the "node" condition and to @noble/hashes everywhere else.
export { sha256, sha256Hex, sha256Implementation } from '#sha256';

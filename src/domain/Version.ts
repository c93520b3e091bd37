/**
 * The package's name and version, written once: `pi-storage --version` prints them and every state snapshot
 * manifest records them (test/package/packed.test.ts checks the version against package.json).
 */
export const PACKAGE_NAME = "pi-agent-storage"
export const VERSION = "0.1.0"

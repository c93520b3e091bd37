/** The package version `pi-storage --version` prints (the packed-tarball test checks it against package.json). */
export const VERSION = "0.1.0"

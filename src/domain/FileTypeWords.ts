/**
 * The words a person uses for a file type in messages (never the port's `SymbolicLink`/`File`).
 * Pure; `type` is the FileSystem port's `FileType`.
 */
import { withArticle } from "./Article.js"

const WORDS: Readonly<Record<string, string>> = {
  File: "regular file",
  Directory: "directory",
  SymbolicLink: "symlink",
  Other: "special file (socket, FIFO or device)"
}

/** `regular file`, `directory`, `symlink`, `special file (…)`. */
export const fileTypeWord = (type: string): string => WORDS[type] ?? type

/** With its article: `a regular file`, `a symlink`, `a directory`. */
export const aFileType = (type: string): string => withArticle(fileTypeWord(type))

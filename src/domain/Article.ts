/**
 * The indefinite article of a generated message (`a directory`, `an index`, `an INI string`): the one rule
 * every message that puts "a" before a word it did not write itself goes through. Pure.
 *
 * Chosen by how the word is said, which its first letters decide for the words messages use: a vowel letter
 * takes "an" (`an index`, `an array`, `an undefined`), except where it sounds like "you" or "w" (`a unit`,
 * `a user`, `a UTF-8 string`, `a Uint8Array`, `a URL`, `a one-off`, `a European`); a silent h takes "an"
 * (`an hour`); a number said with a vowel takes "an" (`an 8`, `an 11`, `an 18000`). Every other word takes "a".
 */

/** A leading "u"/"e"/"o" said as "you" or "w": `unit`, `unique`, `user`, `usual`, `utility`, `UTF`, `Uint8Array`, `URL`, `UUID`, `one`, `eu…`. */
const CONSONANT_SOUND = /^(?:uni(?![mn])|us[aeiu]|ut[fi]|uint|ur[ail]|uu|u[A-Z]|U[A-Z]|one\b|once\b|eu)/
const SILENT_H = /^(?:hour|honest|honou?r|heir)/i
/** 8…, 11 and 18 (and 11,000 or 18,000 said the same way). */
const VOWEL_NUMBER = /^(?:8|1[18](?:\d{3})*(?!\d))/

export const articleFor = (word: string): "a" | "an" => {
  if (VOWEL_NUMBER.test(word)) return "an"
  if (SILENT_H.test(word)) return "an"
  // The test for "you"/"w" sounds looks at the case as written (`URL`, `Uint8Array`), then in lower case.
  if (CONSONANT_SOUND.test(word) || CONSONANT_SOUND.test(word.toLowerCase())) return "a"
  return /^[aeiou]/i.test(word) ? "an" : "a"
}

/** `word` after its article: `an index`, `a symlink`. */
export const withArticle = (word: string): string => `${articleFor(word)} ${word}`

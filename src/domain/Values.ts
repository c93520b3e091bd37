/**
 * How a refused input value is named in an error message (InvalidSegment, InvalidPolicy): short, exact for
 * the values that matter (NaN, -0, Infinity, "2" versus 2), never throwing on cycles, getters or proxies.
 */
import { withArticle } from "./Article.js"

const MAX_LENGTH = 60

const clip = (text: string): string => (text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH - 1)}…` : text)

/** `5`, `NaN`, `"2"`, `undefined`, `null`, `5n`, `Symbol(x)`, `[array]`, `{object}`, `function`. */
export const describeValue = (value: unknown): string => {
  switch (typeof value) {
    case "string":
      return clip(JSON.stringify(value))
    case "number":
      return Object.is(value, -0) ? "-0" : String(value)
    case "bigint":
      return `${value}n`
    case "undefined":
      return "undefined"
    case "boolean":
      return String(value)
    case "symbol":
      return clip(value.toString())
    case "function":
      return "a function"
    default:
      if (value === null) return "null"
      try {
        return Array.isArray(value) ? `an array of ${value.length}` : `an object (${clip(Object.keys(value as object).join(", ")) || "no keys"})`
      } catch {
        return "an object"
      }
  }
}

/** `a number`, `a string`, `null`, `undefined`, `an array`, … : what a value is, for "must be a string (got …)". */
export const kindOfValue = (value: unknown): string =>
  value === null || value === undefined ? String(value) : Array.isArray(value) ? "an array" : withArticle(typeof value)

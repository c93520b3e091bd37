/**
 * The one judgement of what a web data root's entry is (state snapshots' scope, config history, the doctor).
 */
import { describe, expect, it } from "vitest"
import * as fc from "effect/FastCheck"
import { segmentViolation } from "../../src/domain/Segment.js"
import { WEB_RESTORE_ASIDE_DIR } from "../../src/domain/StateSnapshot.js"
import { classifyWebDataEntry } from "../../src/domain/WebDataEntries.js"

describe("classifyWebDataEntry", () => {
  it("names each kind of entry", () => {
    expect(classifyWebDataEntry("bookmarks", "Directory")).toEqual({ _tag: "Extension" })
    expect(classifyWebDataEntry("bookmarks", "SymbolicLink")).toEqual({ _tag: "LinkedExtension" })
    expect(classifyWebDataEntry(WEB_RESTORE_ASIDE_DIR, "Directory")).toEqual({ _tag: "LibraryDir" })
    expect(classifyWebDataEntry(WEB_RESTORE_ASIDE_DIR, "SymbolicLink")).toEqual({ _tag: "LibraryDir" })
    expect(classifyWebDataEntry("Bad_Name", "Directory")._tag).toBe("Misnamed")
    expect(classifyWebDataEntry("notes.txt", "File")).toEqual({ _tag: "Other" })
  })

  it("an extension's data is exactly a directory or link whose name the segment rule accepts (WR2)", () => {
    fc.assert(fc.property(fc.string({ maxLength: 20 }), fc.constantFrom("Directory", "SymbolicLink", "File", "FIFO"), (name, type) => {
      const entry = classifyWebDataEntry(name, type)
      const isData = entry._tag === "Extension" || entry._tag === "LinkedExtension"
      const expected = name !== WEB_RESTORE_ASIDE_DIR && (type === "Directory" || type === "SymbolicLink") && segmentViolation(name) === null
      expect(isData).toBe(expected)
      if (entry._tag === "Misnamed") expect(entry.why.length).toBeGreaterThan(0)
    }), { numRuns: 300 })
  })
})

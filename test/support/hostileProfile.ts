/**
 * Test support: profile files a hostile or careless world leaves behind (SPEC MEM1, DESIGN "Safety rules"):
 * a Latin-1 and a binary USER.md, and a shard whose front matter is a YAML alias bomb ("billion laughs").
 */

/** "- café au lait" in Latin-1: the é is the single byte 0xE9, not UTF-8 (first bad byte at offset 5). */
export const LATIN1_USER = Uint8Array.from([...new TextEncoder().encode("- caf"), 0xe9, ...new TextEncoder().encode(" au lait\n- Uses pnpm\n")])
export const LATIN1_OFFSET = 5

/** The start of a PNG: 0x89 is not UTF-8 (offset 0). */
export const BINARY_USER = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52])

/** Nine levels of nine aliases each: parses, and expands to 9^9 nodes when converted. */
export const aliasBombShard = (): string => {
  const lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
  for (let i = 1; i < 9; i++) {
    const prev = String.fromCharCode(96 + i)
    const name = String.fromCharCode(97 + i)
    lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(", ")}]`)
  }
  return `---\ntype: User Preference\n${lines.join("\n")}\n---\n\n- A fact nobody can read safely\n`
}
export const BOMB_SHARD = "user-preferences-b0b0b0b0b0b0b0b0.okf.md"

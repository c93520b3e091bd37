/**
 * The redaction rule's version (Redaction.ts), alone so a reader that only compares it (the CLI's clean-scan
 * check, ConfigCleanScan.ts) loads nothing else. A stored copy made under an older rule may hold what this one
 * redacts, so the config history's stat cache vouches for a mirrored copy only under the rule it was made with
 * (then every file is read and stored again). Raise it whenever the rule redacts more.
 */
export const REDACTION_RULE = 2

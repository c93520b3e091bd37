/**
 * A pure computation in steps: a generator that yields between chunks of its work and returns its answer.
 * Run straight through (`runSteps`) it is the plain function; a program on an event loop runs it with a
 * chance to let the loop turn between steps (services/internal/pace.ts), so a plan over 10,000 runs never
 * holds the loop in one piece (BENCHMARKS.md "Event loop during a background prune").
 */
export type Steps<A> = Generator<void, A, void>

/** Items a step handles at most in a loop over runs: well under a millisecond of work. */
export const STEP_ITEMS = 256

/** The answer, every step taken at once. */
export const runSteps = <A>(steps: Steps<A>): A => {
  for (;;) {
    const next = steps.next()
    if (next.done === true) return next.value
  }
}

/** Whether a loop at `index` has done a step's worth of items since its last step. */
export const stepDue = (index: number): boolean => index % STEP_ITEMS === STEP_ITEMS - 1

/**
 * `items` in the order of `compare`, stably (the order `Array.prototype.sort` gives), in steps: runs of
 * `STEP_ITEMS` sorted one a step, then neighbouring runs merged, `STEP_ITEMS` items a step.
 */
export function* sortSteps<A>(items: ReadonlyArray<A>, compare: (a: A, b: A) => number): Steps<Array<A>> {
  let runs: Array<Array<A>> = []
  for (let start = 0; start < items.length; start += STEP_ITEMS) {
    runs.push(items.slice(start, start + STEP_ITEMS).sort(compare))
    yield
  }
  while (runs.length > 1) {
    const merged: Array<Array<A>> = []
    for (let r = 0; r + 1 < runs.length; r += 2) merged.push(yield* mergeSteps(runs[r]!, runs[r + 1]!, compare))
    if (runs.length % 2 === 1) merged.push(runs[runs.length - 1]!)
    runs = merged
  }
  return runs[0] ?? []
}

/** Two sorted runs as one; on a tie the left one's item first (stable). */
function* mergeSteps<A>(left: ReadonlyArray<A>, right: ReadonlyArray<A>, compare: (a: A, b: A) => number): Steps<Array<A>> {
  const out = new Array<A>(left.length + right.length)
  let i = 0
  let j = 0
  for (let k = 0; k < out.length; k++) {
    if (stepDue(k)) yield
    out[k] = j === right.length || (i < left.length && compare(right[j]!, left[i]!) >= 0) ? left[i++]! : right[j++]!
  }
  return out
}

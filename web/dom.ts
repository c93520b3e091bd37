/**
 * Building the page: elements made with `h` and text set as text (never HTML), so nothing a file name, a
 * finding or a config file holds can become markup or script (README "Dashboard").
 */
export type Child = Node | string | number | null | undefined | false | ReadonlyArray<Child>

export type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>

export const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: ReadonlyArray<Child>): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value)
    else if (value === true) element.setAttribute(name, "")
    else element.setAttribute(name, String(value))
  }
  append(element, children)
  return element
}

export const append = (parent: Node, children: ReadonlyArray<Child>): void => {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(parent, child as ReadonlyArray<Child>)
    else parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : (child as Node))
  }
}

/** Replace what `parent` shows. */
export const show = (parent: Element, ...children: ReadonlyArray<Child>): void => {
  parent.replaceChildren()
  append(parent, children)
}

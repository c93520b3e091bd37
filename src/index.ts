/**
 * pi-agent-storage: the Effect API (services, layers, programs, schemas, errors).
 */
export * from "./domain/Errors.js"
export * from "./domain/Segment.js"
export * from "./domain/AgentPaths.js"
export * from "./domain/WebPaths.js"
export * from "./domain/Formats.js"
export * from "./services/FileSystem.js"
export * from "./services/Host.js"

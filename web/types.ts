/** The API's answers, typed by the server's own Schemas (src/dashboard/schemas.ts): one source of truth. */
import type * as S from "../src/dashboard/schemas.js"

export type MapLevel = typeof S.MapLevel.Type
export type MapNode = typeof S.MapNode.Type
export type GrowthView = typeof S.GrowthView.Type
export type RunList = typeof S.RunList.Type
export type PrunePlanView = typeof S.PrunePlanView.Type
export type PruneResult = typeof S.PruneResult.Type
export type ProtectionView = typeof S.ProtectionView.Type
export type ConfigView = typeof S.ConfigView.Type
export type DiffResult = typeof S.DiffResult.Type
export type CreateResult = typeof S.CreateResult.Type
export type VerifyResult = typeof S.VerifyResult.Type
export type ConfigSnapshotResult = typeof S.ConfigSnapshotResult.Type
export type DoctorReport = typeof S.DoctorReport.Type
export type ProfileView = typeof S.ProfileView.Type
export type StatusDocument = typeof S.StatusDocument.Type
export type SessionInfo = typeof S.SessionInfo.Type

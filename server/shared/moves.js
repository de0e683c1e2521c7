// The mission lifecycle as the node has it: GET /shared/moves.json, written from the
// engine's table (docs/rules.md, Mission lifecycle), so that no app holds a copy. An app
// loads it once (loadMoves) before it shows a mission.

import { get } from "./api.js";

let table = null;

// loadMoves reads the table once; after a failure (no network and nothing cached) the
// next call tries again.
export async function loadMoves() {
  if (!table) table = await get("/shared/moves.json");
  return table;
}

// movesFrom lists the states a client may ask for from state, in lifecycle order (the
// next step forward, then FAILED); none from a finished or unknown state.
export function movesFrom(state) {
  return (table && table.moves[state]) || [];
}

// missionStates lists the mission states in lifecycle order.
export function missionStates() {
  return table ? table.states : [];
}

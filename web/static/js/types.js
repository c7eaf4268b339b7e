// @ts-check
// The API's types, for the type checker only (nothing imports this file
// at run time): taken from the TypeScript SDK that `make lint-web`
// generates from api/openapi.yaml with openapi-typescript, so that the
// pages read the stream events the document describes.

/** @typedef {import('../../../hack/openapi/gen/openapi-typescript').components['schemas']} Schemas */
/** @typedef {Schemas['Action']} Action */
/** @typedef {Schemas['ActionEvent']} ActionEvent */
/** @typedef {Schemas['RunSummary']} RunSummary */
/** @typedef {Schemas['RunEvent']} RunEvent */
/** @typedef {Schemas['ProjectDomain']} ProjectDomain */
/** @typedef {Schemas['StageEvent']} StageEvent */
/** @typedef {Schemas['PromotionEvent']} PromotionEvent */
/** @typedef {Schemas['Stage']} Stage */
/** @typedef {Schemas['Warehouse']} Warehouse */
/** @typedef {Schemas['WarehouseEvent']} WarehouseEvent */
/** @typedef {Schemas['Promotion']} Promotion */
/** @typedef {Schemas['Freight']} Freight */
/** @typedef {Schemas['Session']} Session */

/**
 * StreamEvents maps each item event of the streams to its data.
 * @typedef {{action: ActionEvent, run: RunEvent, project: ProjectDomain, stage: StageEvent, warehouse: WarehouseEvent, promotion: PromotionEvent}} StreamEvents
 */

export {};

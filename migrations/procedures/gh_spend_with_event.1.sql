-- Spends one OpenID provider code or token (an authorization code exchanged, a refresh token
-- rotated) with its event, in one round trip: the conditional UPDATE of every spend (live, not
-- spent: of callers racing on any pod and node, one wins), then the event (its row in the event
-- store without application_id, as one JSON object), committed before it answers `spent` (1, or 0
-- when another caller spent it first: nothing is written).
-- Version 1. Never edit a landed version: write the next one and a migration that installs it.
CREATE PROCEDURE gh_spend_with_event(
  IN p_app BIGINT, IN p_kind VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_hash VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now DATETIME(6),
  IN p_event LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE credentials SET used_at = p_now
    WHERE value_hash = p_hash AND application_id = p_app AND kind = p_kind AND used_at IS NULL AND expires_at > p_now;
  IF ROW_COUNT() = 1 THEN
    INSERT INTO events (application_id, type, version, account_id, actor_kind, actor_id, client_id, subject_kind, subject_id, address, user_agent, request_id, occurred_at, data)
      VALUES (p_app,
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.type')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.version')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.account_id')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.actor_kind')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.actor_id')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.client_id')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.subject_kind')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.subject_id')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.address')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.user_agent')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.request_id')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.occurred_at')),
        JSON_UNQUOTE(JSON_EXTRACT(p_event, '$.data')));
    COMMIT;
    SELECT 1 AS spent;
  ELSE
    ROLLBACK;
    SELECT 0 AS spent;
  END IF;
END

-- Spends one OpenID provider code or token (an authorization code exchanged, a refresh token
-- rotated) with its event, in one round trip: the conditional UPDATE of every spend (live, not
-- spent: of callers racing on any pod and node, one wins), then the event (its row in the event
-- store, one parameter a column), committed before it answers `spent` (1, or 0 when another
-- caller spent it first: nothing is written).
-- Version 1. Never edit a landed version: write the next one and a migration that installs it.
CREATE PROCEDURE gh_spend_with_event(
  IN p_app BIGINT, IN p_kind VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_hash VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_now DATETIME(6),
  IN p_e_uid VARCHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_type VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_version INT,
  IN p_e_account_id BIGINT,
  IN p_e_actor_kind VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_actor_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_client_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_subject_kind VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_subject_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_address VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_user_agent VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_e_occurred_at DATETIME(6),
  IN p_e_data TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE credentials SET used_at = p_now
    WHERE value_hash = p_hash AND application_id = p_app AND kind = p_kind AND used_at IS NULL AND expires_at > p_now;
  IF ROW_COUNT() = 1 THEN
    INSERT INTO events (application_id, uid, type, version, account_id, actor_kind, actor_id, client_id, subject_kind, subject_id, address, user_agent, request_id, occurred_at, data)
      VALUES (p_app, p_e_uid, p_e_type, p_e_version, p_e_account_id, p_e_actor_kind, p_e_actor_id, p_e_client_id, p_e_subject_kind, p_e_subject_id, p_e_address, p_e_user_agent, p_e_request_id, p_e_occurred_at, p_e_data);
    COMMIT;
    SELECT 1 AS spent;
  ELSE
    ROLLBACK;
    SELECT 0 AS spent;
  END IF;
END

-- The refresh-token rotation in one round trip: spends the presented refresh token if it is live
-- and belongs to the client, then inserts its successor access and refresh tokens in the spent
-- token's record and family, with its extra (the session's facts: how and when the person signed
-- in), in one transaction committed before it answers `rotated` (1 or 0). A refresh token of a
-- disabled user does not rotate. The rotation's event (token.refreshed) comes as parameters, its
-- account (as actor and subject) the spent token's record, its time the rotation's, and is
-- inserted in the same transaction: parameters rather than one JSON object, which MariaDB would
-- take apart member by member on every refresh.
-- A procedure beside gh_rotate_refresh (its version 3 is this without the event), not its version
-- 4: its parameters differ, and pods of the release before keep calling gh_rotate_refresh until they
-- are replaced.
-- Version 2: a disable whose until has passed is over (the account's refresh tokens rotate again), but a
-- token issued while it lasted stays refused.
-- Never edit a landed version: write the next one and a migration that installs it.
CREATE PROCEDURE gh_rotate_with_event(
  IN p_app BIGINT, IN p_spent VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_client BIGINT, IN p_now DATETIME(6),
  IN p_access VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_access_expires DATETIME(6),
  IN p_refresh VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_refresh_expires DATETIME(6),
  IN p_uid VARCHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_type VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_client_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_address VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_user_agent VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_request_id VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_data TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
  DECLARE v_entity BIGINT;
  DECLARE v_family VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE v_extra LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE credentials SET used_at = p_now
    WHERE value_hash = p_spent AND application_id = p_app AND kind = 'refresh_token' AND used_at IS NULL AND expires_at > p_now
      AND (for_client_id = p_client OR (for_client_id IS NULL AND client_id = p_client))
      AND NOT EXISTS (SELECT 1 FROM entities d WHERE d.id = credentials.entity_id AND d.disabled_at IS NOT NULL
        AND (d.disabled_until IS NULL OR d.disabled_until > p_now OR (credentials.created_at >= d.disabled_at AND credentials.created_at < d.disabled_until)));
  IF ROW_COUNT() = 1 THEN
    SELECT entity_id, family, extra INTO v_entity, v_family, v_extra FROM credentials WHERE value_hash = p_spent;
    INSERT INTO credentials (application_id, kind, value_hash, entity_id, client_id, for_client_id, redirect_uri, extra, family, expires_at, used_at, created_at)
      VALUES (p_app, 'access_token', p_access, v_entity, p_client, NULL, NULL, v_extra, v_family, p_access_expires, NULL, p_now),
             (p_app, 'refresh_token', p_refresh, v_entity, p_client, NULL, NULL, v_extra, v_family, p_refresh_expires, NULL, p_now);
    INSERT INTO events (application_id, uid, type, version, account_id, actor_kind, actor_id, client_id, subject_kind, subject_id, address, user_agent, request_id, occurred_at, data)
      VALUES (p_app, p_uid, p_type, 1, v_entity, 'account', v_entity, p_client_id, 'record', v_entity, p_address, p_user_agent, p_request_id, p_now, p_data);
    COMMIT;
    SELECT 1 AS rotated;
  ELSE
    ROLLBACK;
    SELECT 0 AS rotated;
  END IF;
END

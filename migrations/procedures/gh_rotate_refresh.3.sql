-- The refresh-token rotation in one round trip: spends the presented refresh token if it is live
-- and belongs to the client, then inserts its successor access and refresh tokens in the spent
-- token's record and family, with its extra (the session's facts: how and when the person signed
-- in), in one transaction committed before it answers `rotated` (1 or 0). A refresh token of a
-- disabled user does not rotate.
-- Version 3: the successors carry the spent token's extra. Never edit a landed version: write the next one and a migration that installs it.
CREATE PROCEDURE gh_rotate_refresh(
  IN p_app BIGINT, IN p_spent VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_client BIGINT, IN p_now DATETIME(6),
  IN p_access VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_access_expires DATETIME(6),
  IN p_refresh VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_refresh_expires DATETIME(6))
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
      AND NOT EXISTS (SELECT 1 FROM entities d WHERE d.id = credentials.entity_id AND d.disabled_at IS NOT NULL);
  IF ROW_COUNT() = 1 THEN
    SELECT entity_id, family, extra INTO v_entity, v_family, v_extra FROM credentials WHERE value_hash = p_spent;
    INSERT INTO credentials (application_id, kind, value_hash, entity_id, client_id, for_client_id, redirect_uri, extra, family, expires_at, used_at, created_at)
      VALUES (p_app, 'access_token', p_access, v_entity, p_client, NULL, NULL, v_extra, v_family, p_access_expires, NULL, p_now),
             (p_app, 'refresh_token', p_refresh, v_entity, p_client, NULL, NULL, v_extra, v_family, p_refresh_expires, NULL, p_now);
    COMMIT;
    SELECT 1 AS rotated;
  ELSE
    ROLLBACK;
    SELECT 0 AS rotated;
  END IF;
END

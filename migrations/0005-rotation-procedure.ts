import type { QueryInterface } from 'sequelize';

/**
 * The refresh-token rotation in one round trip on MySQL/MariaDB: a stored procedure that spends
 * the presented token and inserts its successors in one transaction, committed before it answers
 * (src/db/repositories/credentials.ts, rotate). Four round trips (START TRANSACTION, UPDATE,
 * INSERT, COMMIT) become one CALL; docs/decisions.md has the measurements. SQLite keeps the
 * statements. Creating it needs the CREATE ROUTINE privilege, which a database owner has.
 */
const HASH = 'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin';

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  if (qi.sequelize.getDialect() !== 'mysql') return;
  await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_rotate_refresh');
  await qi.sequelize.query(`
CREATE PROCEDURE gh_rotate_refresh(
  IN p_app BIGINT, IN p_spent ${HASH}, IN p_client BIGINT, IN p_now DATETIME(6),
  IN p_access ${HASH}, IN p_access_expires DATETIME(6), IN p_refresh ${HASH}, IN p_refresh_expires DATETIME(6))
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
  DECLARE v_entity BIGINT;
  DECLARE v_family VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE credentials SET used_at = p_now
    WHERE value_hash = p_spent AND application_id = p_app AND kind = 'refresh_token' AND used_at IS NULL AND expires_at > p_now
      AND (for_client_id = p_client OR (for_client_id IS NULL AND client_id = p_client));
  IF ROW_COUNT() = 1 THEN
    SELECT entity_id, family INTO v_entity, v_family FROM credentials WHERE value_hash = p_spent;
    INSERT INTO credentials (application_id, kind, value_hash, entity_id, client_id, for_client_id, redirect_uri, extra, family, expires_at, used_at, created_at)
      VALUES (p_app, 'access_token', p_access, v_entity, p_client, NULL, NULL, NULL, v_family, p_access_expires, NULL, p_now),
             (p_app, 'refresh_token', p_refresh, v_entity, p_client, NULL, NULL, NULL, v_family, p_refresh_expires, NULL, p_now);
    COMMIT;
    SELECT 1 AS rotated;
  ELSE
    ROLLBACK;
    SELECT 0 AS rotated;
  END IF;
END`);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  if (qi.sequelize.getDialect() !== 'mysql') return;
  await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_rotate_refresh');
}

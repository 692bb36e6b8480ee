-- A sign-in's write in one round trip: writes the record's next state (lastLogin, and a rehashed
-- password when one is given) if the record is still at the version the password check read,
-- inserts the sign-in's credentials and its outbox rows (what its events leave for the workers: the
-- record's new snapshot, and any other), and commits before it answers `signed_in` (1, or 0 when
-- the record changed: nothing is written).
--
-- The credentials come as one JSON array of objects (a sign-in issues one to three), each without
-- its NULL columns: JSON_EXTRACT of a missing member is NULL on MySQL and MariaDB alike. Each is
-- inserted by a one-row INSERT … VALUES, which never takes the table's AUTO-INC lock. The outbox
-- rows come the same way, any number of them (id, queue, name, payload as JSON text, entity_id, and
-- event_id: the event the row is for),
-- so a new event of a sign-in never needs another version of this procedure.
-- The sign-in's events come the same way (one JSON array, each event's row in the event store
-- without application_id, which is p_app), inserted in the same transaction: no sign-in without
-- its events.
-- A procedure beside gh_sign_in_events, not its version 2: its parameters differ, and pods of the
-- release before it keep calling gh_sign_in_events until they are replaced.
-- Version 1. Never edit a landed version: write the next one and a migration that installs it.
CREATE PROCEDURE gh_sign_in_with_events(
  IN p_app BIGINT, IN p_entity BIGINT, IN p_version BIGINT, IN p_password_hash VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_attributes LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_last_updated DATETIME(6), IN p_now DATETIME(6), IN p_credentials LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_outbox LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  IN p_events LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)
MODIFIES SQL DATA
SQL SECURITY INVOKER
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE n INT DEFAULT JSON_LENGTH(p_credentials);
  DECLARE j INT DEFAULT 0;
  DECLARE m INT DEFAULT JSON_LENGTH(p_outbox);
  DECLARE k INT DEFAULT 0;
  DECLARE e INT DEFAULT JSON_LENGTH(p_events);
  DECLARE v_event LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  START TRANSACTION;
  UPDATE entities SET password_hash = COALESCE(p_password_hash, password_hash), attributes = p_attributes,
      last_updated = p_last_updated, version = p_version + 1
    WHERE id = p_entity AND application_id = p_app AND version = p_version;
  IF ROW_COUNT() = 1 THEN
    WHILE i < n DO
      INSERT INTO credentials (application_id, kind, value_hash, entity_id, client_id, for_client_id, redirect_uri, extra, family, expires_at, used_at, created_at)
        VALUES (p_app,
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].kind'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].value_hash'))),
          p_entity,
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].client_id'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].for_client_id'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].redirect_uri'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].extra'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].family'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_credentials, CONCAT('$[', i, '].expires_at'))),
          NULL, p_now);
      SET i = i + 1;
    END WHILE;
    WHILE j < m DO
      INSERT INTO outbox (id, application_id, queue, name, payload, status, attempts, created_at, updated_at, entity_id, event_id)
        VALUES (
          JSON_UNQUOTE(JSON_EXTRACT(p_outbox, CONCAT('$[', j, '].id'))),
          p_app,
          JSON_UNQUOTE(JSON_EXTRACT(p_outbox, CONCAT('$[', j, '].queue'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_outbox, CONCAT('$[', j, '].name'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_outbox, CONCAT('$[', j, '].payload'))),
          'pending', 0, p_now, p_now,
          JSON_UNQUOTE(JSON_EXTRACT(p_outbox, CONCAT('$[', j, '].entity_id'))),
          JSON_UNQUOTE(JSON_EXTRACT(p_outbox, CONCAT('$[', j, '].event_id'))));
      SET j = j + 1;
    END WHILE;
    WHILE k < e DO
      -- the event taken out once; its members read from it alone
      SET v_event = JSON_EXTRACT(p_events, CONCAT('$[', k, ']'));
      INSERT INTO events (application_id, uid, type, version, account_id, actor_kind, actor_id, client_id, subject_kind, subject_id, address, user_agent, request_id, occurred_at, data)
        VALUES (
          p_app,
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.uid')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.type')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.version')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.account_id')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.actor_kind')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.actor_id')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.client_id')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.subject_kind')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.subject_id')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.address')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.user_agent')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.request_id')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.occurred_at')),
          JSON_UNQUOTE(JSON_EXTRACT(v_event, '$.data')));
      SET k = k + 1;
    END WHILE;
    COMMIT;
    SELECT 1 AS signed_in;
  ELSE
    ROLLBACK;
    SELECT 0 AS signed_in;
  END IF;
END

"""Migration 17, SQLite's 17 on PostgreSQL: an import is one change set of many notes, its
row without scope or topic, with an item per note keeping the note's state before it."""

SQL = """
        ALTER TABLE note_changes ALTER COLUMN scope DROP NOT NULL,
            ALTER COLUMN topic DROP NOT NULL,
            DROP CONSTRAINT note_changes_action_check,
            ADD CONSTRAINT note_changes_action_check
                CHECK (action IN ('create', 'update', 'forget', 'revert', 'import'));
        CREATE TABLE note_change_items (
            change_id bigint NOT NULL REFERENCES note_changes (id),
            scope text NOT NULL,
            topic text NOT NULL,
            before_json text,
            PRIMARY KEY (change_id, scope, topic)
        );
        """

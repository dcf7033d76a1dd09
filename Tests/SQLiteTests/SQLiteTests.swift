// SQLiteTests

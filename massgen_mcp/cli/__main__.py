from massgen_mcp.cli.main import main

raise SystemExit(main())

from carbonshift.cli.app import main

raise SystemExit(main())

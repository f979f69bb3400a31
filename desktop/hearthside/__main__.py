from hearthside.cli import main

main()

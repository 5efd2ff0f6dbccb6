from ndcg_labeling.cli import main

main()

"""What lvegit writes for people: LVE READMEs, `show`, summaries, scaffolds, the static site and exports."""

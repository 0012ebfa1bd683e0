module github.com/coordhost/coordhost

go 1.26.0

// Writes samples of Logback pattern layouts with the real Logback (Debian's liblogback-java):
// Logback's documented default console pattern, the same with a date, and Spring Boot's
// default file pattern (as Spring Boot configures Logback; the pid is fixed here).
//
// usage: javac -cp $CP LogbackGen.java && java -cp $CP:. LogbackGen OUTDIR
//        CP=/usr/share/java/logback-classic.jar:/usr/share/java/logback-core.jar:
//           /usr/share/java/slf4j-api.jar
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.core.FileAppender;
import java.io.File;
import org.slf4j.LoggerFactory;

public class LogbackGen {
    static void emit(String dir, String pattern) {
        LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
        new File(dir).mkdirs();
        PatternLayoutEncoder enc = new PatternLayoutEncoder();
        enc.setContext(ctx);
        enc.setPattern(pattern);
        enc.start();
        FileAppender<ch.qos.logback.classic.spi.ILoggingEvent> app = new FileAppender<>();
        app.setContext(ctx);
        app.setFile(dir + "/input");
        app.setAppend(false);
        app.setEncoder(enc);
        app.start();
        Logger root = ctx.getLogger(Logger.ROOT_LOGGER_NAME);
        root.detachAndStopAllAppenders();
        root.addAppender(app);
        root.setLevel(ch.qos.logback.classic.Level.TRACE);
        org.slf4j.Logger svc = LoggerFactory.getLogger("com.example.orders.OrderService");
        org.slf4j.Logger web = LoggerFactory.getLogger("com.example.web.Api");
        svc.trace("entering placeOrder");
        svc.debug("cart has {} items", 3);
        web.info("Started Api in 2.31 seconds");
        svc.warn("inventory low for sku {}", "A-100");
        svc.error("payment gateway returned {}", 503);
        root.detachAndStopAllAppenders();
    }

    public static void main(String[] args) {
        String out = args[0];
        emit(out + "/java_logback_default",
             "%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n");
        emit(out + "/java_logback_date",
             "%d{yyyy-MM-dd HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n");
        emit(out + "/java_spring_boot",
             "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %5p 12345 --- [%15.15t] %-40.40logger{39} : %m%n");
    }
}
